-- geomon's response store and metric history live beside Dagster's storage, in their own database.
CREATE DATABASE geomon OWNER geomon;
