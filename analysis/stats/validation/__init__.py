"""Statistical validation of the throttle-delay fits on synthetic data (labelled as such)."""
