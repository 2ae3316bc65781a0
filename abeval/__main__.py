from abeval.cli import main

main()
