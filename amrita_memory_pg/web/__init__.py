"""The admin web page (issue 17)."""
