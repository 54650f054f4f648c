"""The Corpus tab: add files, pick reader options, scan them."""
