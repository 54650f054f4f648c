"""The Train tab: the settings form, the training child process, live plots and the run history."""
