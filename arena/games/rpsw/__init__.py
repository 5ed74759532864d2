"""Rock-paper-scissors-well: the game's room. ``game`` holds its spec (``SPEC``) and parameter table,
``reference`` the NumPy twin of ``arena/native/games/rpsw/``, ``bots`` its scripted throwers."""
