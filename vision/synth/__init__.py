"""Synthetic data: the table renderer, training data from it, and model training."""
