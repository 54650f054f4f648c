"""The Inspect tab: coloured tokens as you type, side-by-side panes, hover details, decode."""
