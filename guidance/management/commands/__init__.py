"""seed_guidance: the published guidance the portal ships with; import_guidance_documents: the
documents it cites."""
