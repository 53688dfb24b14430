# Read by cpack before it packs: a package whose programs would look for their files in
# the wrong places is refused (configure as packaging/bootstrap deb does).
if(NOT CPACK_PACKAGING_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "Debian packages install to /usr, but this build was configured for "
          "'${CPACK_PACKAGING_INSTALL_PREFIX}', which its programs look in: configure with "
          "-DCMAKE_INSTALL_PREFIX=/usr -DSTAGECRAFT_SOURCE_TREE_CLUSTERS=OFF (packaging/bootstrap deb)")
endif()
if(CPACK_STAGECRAFT_SOURCE_TREE_CLUSTERS)
  message(FATAL_ERROR "this build's programs look for the example clusters in its source tree "
          "first: configure with -DSTAGECRAFT_SOURCE_TREE_CLUSTERS=OFF (packaging/bootstrap deb)")
endif()
