
cnn"float32*  0
:conv2d(0@Xbrelu:	maxpool2d0:basic_block( 8:inverted_residual( P:global_avgpool:linear 
h