# install(): headers, the exported targets linea::linea and linea::native, a package config and a version file.
include(CMakePackageConfigHelpers)
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS linea linea_native EXPORT linea-targets)
install(EXPORT linea-targets NAMESPACE linea:: DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/linea)
configure_package_config_file(cmake/linea-config.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/linea-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/linea)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/linea-config-version.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/linea-config.cmake ${CMAKE_CURRENT_BINARY_DIR}/linea-config-version.cmake
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/linea)
