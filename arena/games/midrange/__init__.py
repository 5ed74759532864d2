"""Midrange air combat, 1v1 to 4v4: the game's room. ``game`` holds its spec (``SPEC``), ``params``
its parameter table and rules, ``obs`` the observation layout, ``reference`` and ``physics`` the
NumPy twin of ``arena/native/games/midrange/``, ``bots`` its scripted pilots, ``rewards`` its reward
terms, ``missile_reach`` the missile reach model, ``shots`` the shot geometry of evaluation games and
``render`` the drawing of a match."""
