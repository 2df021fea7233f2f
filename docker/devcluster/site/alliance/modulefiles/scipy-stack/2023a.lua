-- A stand-in for the Alliance's scipy-stack module: it loads python, as the real one needs, but
-- brings no packages.
whatis("SciPy stack 2023a (a stand-in: no packages)")
depends_on("python")
setenv("EBROOTSCIPYMINSTACK", "@LAB@/site/alliance/software/scipy-stack/2023a")
setenv("EBVERSIONSCIPYMINSTACK", "2023a")
