"""The content-addressed cache of model outputs and its pack files."""
