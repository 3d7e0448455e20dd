"""Metrics (Prometheus) and structured logs. Hooks are attached from the composition root to
plain callbacks the other layers offer, so nothing below imports prometheus-client."""
