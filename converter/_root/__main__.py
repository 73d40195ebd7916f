"""`python -m poolir`: the same command line as the `poolir` script."""

from poolir.converter.cli import main

if __name__ == "__main__":
    main(prog_name="poolir")
