"""Command-line entry points: the only place that picks concrete models and engines."""
