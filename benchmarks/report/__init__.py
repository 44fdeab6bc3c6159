"""The report of an analysis: collected results (`collect`), verdicts in plain language
(`verdict`), inline SVG charts (`svg`), the HTML page (`html`) and the files and terminal
table it ends with (`outputs`)."""
