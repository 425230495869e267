"""Models of reclaim behaviour (what another throttle timeout or deferral divisor would do)."""
