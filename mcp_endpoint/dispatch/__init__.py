"""Protocol dispatch: which wire generation a message speaks, whether it is valid, which handler
answers it, and what goes back."""
