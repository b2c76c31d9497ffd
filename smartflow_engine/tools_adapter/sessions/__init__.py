"""Sessions: the execute loop's state, snapshots, session stores and the prompt rules."""
