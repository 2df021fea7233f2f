# Empty for now: the job models arrive with the job composer.
