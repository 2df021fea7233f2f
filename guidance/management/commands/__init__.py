"""seed_guidance: load the published guidance of the clusters the portal ships with."""
