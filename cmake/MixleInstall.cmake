# Installation and the CMake package: find_package(mixle CONFIG REQUIRED) then
# target_link_libraries(app PRIVATE mixle::mixle). Headers under include/mixle are host-only
# (no CUDA, no nlohmann); the config looks for CUDA, NCCL, Gloo or MPI only when this build
# used them, and only for a static library (a shared one carries its dependencies itself).
include(CMakePackageConfigHelpers)
set(MIXLE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mixle)

install(TARGETS mixle EXPORT mixleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS mixle_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/mixle DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/mixle/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mixle)
install(EXPORT mixleTargets NAMESPACE mixle:: DESTINATION ${MIXLE_CMAKE_DIR})

get_target_property(_mixle_type mixle TYPE)
if(_mixle_type STREQUAL "STATIC_LIBRARY")
  set(MIXLE_STATIC_PACKAGE ON)
else()
  set(MIXLE_STATIC_PACKAGE OFF)
endif()
configure_package_config_file(cmake/templates/mixleConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mixleConfig.cmake INSTALL_DESTINATION ${MIXLE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mixleConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mixleConfig.cmake ${PROJECT_BINARY_DIR}/mixleConfigVersion.cmake
              cmake/FindNCCL.cmake
        DESTINATION ${MIXLE_CMAKE_DIR})
