# Packages made with CPack from the install rules: `cpack -G DEB` (Linux), `cpack -G NSIS` or
# `cpack -G ZIP` (Windows), `cpack -G DragNDrop` (macOS), run in the build directory.
# See installers/README.md.

set(CPACK_PACKAGE_NAME "oxinfer")
set(CPACK_PACKAGE_VENDOR "The oxinfer project")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VERSION_MAJOR "${PROJECT_VERSION_MAJOR}")
set(CPACK_PACKAGE_VERSION_MINOR "${PROJECT_VERSION_MINOR}")
set(CPACK_PACKAGE_VERSION_PATCH "${PROJECT_VERSION_PATCH}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
  "Oxinfer runs AI models on your own computer: chat with language models, transcription, speech, \
image generation and document search, with nothing sent anywhere. The package holds the oxinfer \
command-line tool and the Oxinfer Studio desktop app.")
set(CPACK_PACKAGE_CONTACT "The oxinfer maintainers")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "Oxinfer")
set(CPACK_PACKAGE_EXECUTABLES "oxinfer-studio" "Oxinfer Studio")
set(CPACK_STRIP_FILES ON)
# Ship the licence text only when the project has one; never a placeholder.
foreach(license_file LICENSE LICENSE.txt LICENSE.md COPYING)
  if(EXISTS "${PROJECT_SOURCE_DIR}/${license_file}")
    set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/${license_file}")
    break()
  endif()
endforeach()
if(EXISTS "${PROJECT_SOURCE_DIR}/README.md")
  set(CPACK_RESOURCE_FILE_README "${PROJECT_SOURCE_DIR}/README.md")
endif()

if(WIN32)
  find_program(OXINFER_MAKENSIS makensis)
  if(OXINFER_MAKENSIS)
    set(CPACK_GENERATOR "NSIS")
    set(CPACK_NSIS_DISPLAY_NAME "Oxinfer ${PROJECT_VERSION}")
    set(CPACK_NSIS_PACKAGE_NAME "Oxinfer")
    set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\oxinfer-studio.exe")
    set(CPACK_NSIS_MUI_FINISHPAGE_RUN "oxinfer-studio.exe")
    set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
  else()
    set(CPACK_GENERATOR "ZIP")
  endif()
elseif(APPLE)
  set(CPACK_GENERATOR "DragNDrop")
  set(CPACK_DMG_VOLUME_NAME "Oxinfer")
else()
  set(CPACK_GENERATOR "DEB")
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # oxinfer_<version>_<arch>.deb
  set(CPACK_DEBIAN_PACKAGE_SECTION "utils")
  set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
  # Dependencies (Qt 6, libstdc++, ...) read from the binaries by dpkg-shlibdeps (package dpkg-dev).
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  # Plugins Qt loads at run time, which dpkg-shlibdeps cannot see: the SQLite driver the app keeps
  # its chats with, and the platform plugins (xcb, wayland) its window needs.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite, qt6-qpa-plugins")
endif()

include(CPack)
