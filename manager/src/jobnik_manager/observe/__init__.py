"""What the manager tells its operators: Prometheus metrics (`metrics`, `collector`),
traces (`tracing`) and the log format (`logs`)."""
