"""Background work every manager replica runs: the lease reaper, due retries, cleanup.

Each step locks the rows it works on with SKIP LOCKED, so replicas share the work
instead of repeating it; none of them is a leader.
"""
