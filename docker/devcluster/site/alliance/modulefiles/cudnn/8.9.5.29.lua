-- A stand-in for the Alliance's cudnn module (the portal's scripts load `python cuda cudnn`).
whatis("cuDNN 8.9.5.29 for CUDA 12 (a stand-in: no library)")
depends_on("cuda")
local root = "@LAB@/site/alliance/software/cudnn/8.9.5.29"
setenv("EBROOTCUDNN", root)
setenv("EBVERSIONCUDNN", "8.9.5.29")
