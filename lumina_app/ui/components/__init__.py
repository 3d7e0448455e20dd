"""Small presentational components; each reads the states it shows, nothing else."""
