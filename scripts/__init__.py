"""cnnbench's helper scripts. Each runs as a file (scripts/sweep.py CONFIG.toml, python3
scripts/plot.py sweep.csv) or, from the repository root, as a module of this package (python3 -m
scripts.sweep CONFIG.toml). A script that imports a sibling does so relatively when it was loaded
as part of the package (__package__ set), and by the sibling's plain name when it runs as a file,
where Python has put scripts/ itself first on sys.path; none of them changes sys.path."""
