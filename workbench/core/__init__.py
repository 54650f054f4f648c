"""The tokenizer core: normalize, pre-tokenize, train, encode/decode. Standard library + ``regex``."""
