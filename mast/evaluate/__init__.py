"""Evaluation: agreement of predictions with gold labels, failure attribution, and analysis."""
