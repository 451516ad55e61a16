"""What people and other tools read: terminal tables, the diff's sections, the notebook card, the
offline HTML report and the Chrome trace."""
