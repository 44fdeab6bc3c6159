from benchmarks.cli import main

main()
