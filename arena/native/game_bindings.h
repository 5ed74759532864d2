// Each game's own part of the pybind11 module, one include per game (the binding-side registry;
// games.h is the runner's). bindings.cpp includes it before it defines the module.
#pragma once

#include "games/goofspiel/binding.h"
#include "games/midrange/binding.h"
#include "games/rpsw/binding.h"
