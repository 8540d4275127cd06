// Where strata-replay finds the files it runs beside itself: the malloc
// override it preloads for "strata" and the script that draws the plot.
#ifndef STRATA_REPLAY_INSTALL_LAYOUT_HPP
#define STRATA_REPLAY_INSTALL_LAYOUT_HPP

#include <string>

namespace strata_replay {

// The override library preloaded for "strata" unless --strata names another.
std::string default_strata_library();

// The python script that draws --plot.
std::string plot_script();

}  // namespace strata_replay

#endif  // STRATA_REPLAY_INSTALL_LAYOUT_HPP
