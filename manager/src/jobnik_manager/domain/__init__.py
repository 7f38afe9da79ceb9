"""Pure rules of the job hierarchy. Imports neither FastAPI nor SQLAlchemy."""
