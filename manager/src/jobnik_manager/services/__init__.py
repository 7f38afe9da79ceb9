"""Use cases. Each takes the request's session and runs inside one transaction that the
caller opens and commits (see `db.engine.Database.transaction`); none commits itself.

Lock order, to keep deadlocks rare: a job row before its stages and tasks, except for
the claim, which starts from the task it picks and only touches the job on first claim.
"""
