# Installation and the CMake package (issue 8 completes the package config).
install(TARGETS mixle_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
