"""The use cases the CLI and the window both call: train a run, load any tokenizer source,
import and export, inspect text. Plain Python over core, corpus, formats and store; no Qt.
"""
