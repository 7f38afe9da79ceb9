"""What both sides of the Jobnik API hold alike, defined once: the manager and the SDK
depend on this package (pinned), never on each other.

- `wire`: statuses, priorities, the reasons the manager gives, event JSON;
- `transitions`: who may move a job, stage or task from one status to another;
- `rules`: the retry delay and the percentage;
- `summary`: a stage's counts of tasks by status;
- `logs`: log lines as JSON or text, with the ids they are about;
- `process`: what a long-running manager or worker process sets for itself.

Standard library only.
"""
