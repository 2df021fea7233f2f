"""Telling users what became of their jobs: events recorded once in the poll's own transaction
(record.py), by the user's choice (choices.py), in words that say what to do (messages.py), by
e-mail after the commit (mail.py) and in the portal's list and the browser (views.py)."""
