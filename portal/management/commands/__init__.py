"""serve, ensure_admin and create_api_token: running the portal and its first accounts."""
