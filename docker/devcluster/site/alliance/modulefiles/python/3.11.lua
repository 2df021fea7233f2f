-- Debian's Python 3.11 as the Alliance's python module: `python`, a `virtualenv` that makes a venv
-- with the standard library, and pip pointed at the lab's wheelhouse (Alliance's pip config does
-- the same with its own wheelhouse).
whatis("Python 3.11 (Debian's), with the lab wheelhouse")
local root = "@LAB@/site/alliance"
prepend_path("PATH", pathJoin(root, "software/python/3.11/bin"))
setenv("EBROOTPYTHON", "/usr")
setenv("EBVERSIONPYTHON", "3.11")
setenv("PIP_CONFIG_FILE", pathJoin(root, "pip.conf"))
