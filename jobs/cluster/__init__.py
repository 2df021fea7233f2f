"""The link to a cluster: SSH gateway, remote commands and file reads, keys, tracking, importer."""
