"""Helpers shared by test modules (a test module never imports another test module)."""
