"""What `make docs` writes: the generated references and the results blocks of the pages; it
imports the spec and the core."""
