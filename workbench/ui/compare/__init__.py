"""The Compare tab: several tokenizers on the same corpus files — metrics per file and per
language, tokens per language against a baseline, the vocabulary-size sweep, and the words whose
splits differ most. Numbers come from :mod:`workbench.tasks.compare`; this package only shows them."""
