"""seed_templates and register_devcluster: the site templates, and the local dev cluster."""
