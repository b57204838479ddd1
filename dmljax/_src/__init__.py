"""Private implementation of dmljax. Import from :mod:`dmljax`, not from here."""
