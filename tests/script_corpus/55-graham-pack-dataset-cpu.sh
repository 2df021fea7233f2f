#!/bin/bash
#SBATCH --account=def-jtremblay
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=02:00:00

# Turn 400k small image files into one archive before training on them.
cd ~/scratch
tar -cf ~/projects/def-jtremblay/jtremblay/herbarium.tar herbarium_images/
tar -tf ~/projects/def-jtremblay/jtremblay/herbarium.tar | wc -l
