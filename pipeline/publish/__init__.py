"""The published rating list of a month (CSV, FIDE TXT, HTML, FIDE's combined layout), and which months have one."""
