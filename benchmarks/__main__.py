from benchmarks.cli.app import main

main()
