-- A stand-in for the Alliance's cuda module: the variables scripts read, pointing at an empty
-- lab directory (the dev cluster's GPUs are fake).
whatis("CUDA 12.2 (a stand-in: no toolkit)")
local root = "@LAB@/site/alliance/software/cuda/12.2"
setenv("CUDA_HOME", root)
setenv("CUDA_PATH", root)
setenv("EBROOTCUDA", root)
setenv("EBVERSIONCUDA", "12.2")
prepend_path("PATH", pathJoin(root, "bin"))
