"""GPU use: the sampler shipped into jobs, monitoring, samples, chart, efficiency, usage page."""
