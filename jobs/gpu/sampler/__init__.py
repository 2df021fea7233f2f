"""The GPU sampler, one standalone file copied into each job (see portal_gpu_sampler.py)."""
