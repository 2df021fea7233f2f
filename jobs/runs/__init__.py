"""A sweep's runs, followed as one job: each run's values, state, exit code, time and node, from
its array task (the poller's rows) and from the line the run wrote in runs.tsv on the cluster;
and "Re-run failed runs", a new job of the same script that runs only those."""
