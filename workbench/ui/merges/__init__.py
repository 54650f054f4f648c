"""The Merges tab: the lazy merge and vocabulary tables, ancestry, run diffs."""
